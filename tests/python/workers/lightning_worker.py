# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch Lightning training a small model with DDPStrategy(process_group_backend=BACKEND) on
2 CPU processes, which Lightning starts itself (it runs this script again for rank 1).

  lightning_worker.py BACKEND OUT

Rank 0 writes the final parameters to OUT (torch.save of the state dict) and prints
"LIGHTNING OK".
"""

import sys

import torch

import lightning as L
from lightning.pytorch.strategies import DDPStrategy

BACKEND, OUT = sys.argv[1], sys.argv[2]
if BACKEND == "libreduce":
    import libreduce.torch  # noqa: F401


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                       torch.nn.Linear(16, 1))

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(64, 8, generator=g)
    data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
    # The sampler Lightning adds gives each rank its half, in a fixed order.
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=False)
    model = Regression()
    trainer = L.Trainer(accelerator="cpu", devices=2, max_epochs=2,
                        strategy=DDPStrategy(process_group_backend=BACKEND),
                        enable_checkpointing=False, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, loader)
    if trainer.global_rank == 0:
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, OUT)
        backend = torch.distributed.get_backend() if torch.distributed.is_initialized() else "?"
        print("LIGHTNING OK (backend %s)" % backend)


if __name__ == "__main__":
    main()
