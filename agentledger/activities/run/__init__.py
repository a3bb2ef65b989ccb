"""The run activities, one module per activity; ``activities.run_activities`` composes them."""
