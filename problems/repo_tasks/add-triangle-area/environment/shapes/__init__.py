"""Areas of shapes, by name (shapes.registry.area)."""
