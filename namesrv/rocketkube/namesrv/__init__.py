"""rocketkube namesrv."""
