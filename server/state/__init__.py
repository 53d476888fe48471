"""Where the engine's state lives: in this process's memory (store) or shared by every process through
Redis (redis/), how a process polls for work it waits on (poll_window), and scenarios posted to
a running server as a value every process can compile (posted)."""
