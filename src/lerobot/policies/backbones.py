"""The image backbones ACT and Diffusion Policy accept, by torchvision's names.

Read by both configs, which must stay cheap (no torch: they register their types whenever
`lerobot.policies` is imported); `lerobot.policies.resnet` builds the networks.
"""

RESNETS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
