"""What π0 and π0.5 share, neither type's own: the config base and the Gemma/SigLIP sizes
(`configuration`), PaliGemma with its action expert (`gemma`), and the π network and policy
base (`modeling`; sampling, the loss and checkpoint loading are flow/'s). Each type's folder
(`pi0/`, `pi05/`) holds what differs: its defaults, its instruction steps and its suffix."""
