#include "transport/ucx/ucx_context.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "common/status.h"

namespace rd::transport {

rdResult_t ucxError(ucs_status_t status, const char* what) {
  return setErrorf(rdConnectionError, "%s: %s", what, ucs_status_string(status));
}

rdResult_t UcxContext::shared(const std::string& net_devices, std::shared_ptr<UcxContext>* out) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<UcxContext>> current;  // by net devices
  std::lock_guard<std::mutex> lock(mu);
  if ((*out = current[net_devices].lock())) return rdSuccess;
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucxError(st, "ucp_config_read");
  // UCX's own keepalive declares idle endpoints dead after ~20 s when a process is busy; peers
  // that die are seen by the connection (reset) and frozen ones by libreduce's timeouts.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
  }
  if (!net_devices.empty()) ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "libreduce";
  std::shared_ptr<UcxContext> context(new UcxContext);
  st = ucp_init(&params, config, &context->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError(st, "ucp_init");
  current[net_devices] = context;
  *out = std::move(context);
  return rdSuccess;
}

UcxContext::~UcxContext() {
  if (context_ != nullptr) ucp_cleanup(context_);
}

}  // namespace rd::transport
