"""RocketMQ's request bodies and custom headers, shared by servers, SDK and tools."""
