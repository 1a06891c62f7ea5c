"""The dashboard (`loremap dashboard`): the memory in a browser."""
