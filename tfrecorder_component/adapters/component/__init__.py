"""The TFX adapter: artifact type, spec, driver, component and executor."""
