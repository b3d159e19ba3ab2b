"""structlearn.oracles."""
