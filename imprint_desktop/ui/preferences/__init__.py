"""The preferences dialog, generated from the settings' declarations, and its editors."""
