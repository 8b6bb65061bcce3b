"""RealtimeGym games as a ComputerEnv."""
