"""rocketkube broker."""
