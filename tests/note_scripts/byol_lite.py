"""A small BYOL-style library, as if installed (the tests mark it with --library): its target network
is a deep copy of the online one, updated as a moving average."""
import copy

import torch


class BYOL:
    def __init__(self, online, decay=0.9):
        self.online = online
        self.target = copy.deepcopy(online)
        self.decay = decay

    @torch.no_grad()
    def update(self):
        for target, online in zip(self.target.parameters(), self.online.parameters()):
            target.mul_(self.decay).add_(online, alpha=1 - self.decay)
