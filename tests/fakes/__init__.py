"""Local stand-ins for remote services (real protocols, on 127.0.0.1)."""
