"""The models the lesson runs: §7's toy model trained in the notebook (toy/), §6's pretrained
encoders (pretrained/)."""
