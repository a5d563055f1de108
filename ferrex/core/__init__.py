"""The write side's core: pure decisions (decide), what they read (view), the one path
every write takes (runner), and the settings they use."""
