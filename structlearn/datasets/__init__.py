"""structlearn.datasets."""
