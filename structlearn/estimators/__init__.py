"""structlearn.estimators."""
