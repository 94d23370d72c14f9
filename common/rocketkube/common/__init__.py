"""rocketkube common."""
