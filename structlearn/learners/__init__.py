"""structlearn.learners."""
