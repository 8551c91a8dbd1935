"""The public API: script, the script objects, modules and configuration."""
