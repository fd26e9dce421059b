"""One module per family of scenarios; each scenario is a function of the Bench."""
