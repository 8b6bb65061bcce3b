"""OSWorld tasks: loader, setup, evaluation, OSWorldComputerEnv."""
