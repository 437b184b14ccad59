"""A graphleaf-edu class on JupyterHub: accounts, course repository, hub, and a student client."""
