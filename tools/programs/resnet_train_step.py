"""A small ResNet-style CNN: two SGD-with-momentum training steps.

Residual blocks with batch norm, random weights and random images; nothing
is downloaded.  Training batch norm updates its running statistics in place
(the recorder's batch-norm refinement), and each step ends by reading the
loss back to the host after the optimizer step.

Runs on CUDA when available, else on the CPU (for testing the recorder).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, CLASSES, STEPS = 8, 10, 2


class Residual(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = None
        if stride != 1 or c_in != c_out:
            self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                       nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.layers = nn.Sequential(Residual(16, 16, 1), Residual(16, 32, 2),
                                    Residual(32, 64, 2))
        self.fc = nn.Linear(64, CLASSES)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = ResNet().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"resnet_train_step: params {n_params} (3 residual blocks, 16/32/64 channels, "
          f"batch {BATCH}x3x32x32, {CLASSES} classes, SGD momentum 0.9, steps {STEPS}), "
          f"device {dev}")
    for step in range(STEPS):
        x = torch.randn(BATCH, 3, 32, 32, device=dev)
        y = torch.randint(0, CLASSES, (BATCH,), device=dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"resnet_train_step: step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
