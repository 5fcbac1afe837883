"""Serving: a plan becomes a running engine, and a gateway starts in front of it or takes it in.

`serve(plan, mode)` starts the plan on this machine, over SSH on a cluster, or under a
watchdog (either), and returns once it generated; `served(...)` holds one such serve for a
block and stops all it started. `sm121 serve`, `bench ab`, `bench knee --recipe` and `tune`
share them, so a measurement boots the engine the way a user serves it.

The gateway's process lives here too (gateway_process, join, run_upstreams): the gateway
package is the proxy, this package starts it and hands it its upstreams.
"""
