"""Problems and where they come from: the problem model, problem files and sets, public datasets, prompts."""
