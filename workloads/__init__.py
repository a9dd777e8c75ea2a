"""The shipped workload TOML files. A package only so that the build installs them inside aiio
(as aiio.workloads, see setup.cfg), where importlib.resources finds them."""
