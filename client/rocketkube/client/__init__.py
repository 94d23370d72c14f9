"""rocketkube client."""
