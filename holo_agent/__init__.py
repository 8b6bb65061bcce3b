"""The Holo3.1 agent loop, recorder, replay page and reference endpoint."""
