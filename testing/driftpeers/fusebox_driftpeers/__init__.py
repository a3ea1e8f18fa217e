"""The Python side of fusebox's drift-peers benchmark (docs/drift-peers.md).

``fusebox bench drift-peers`` writes seeded streams of one key's per-call
confidence score (streams.json and one .bin file per stream) and the drift
processor's alarms (fusebox.json). This package reads the same files, runs
River's ADWIN, KSWIN and PageHinkley and alibi-detect's KSDrift (sliding
windows) and CVMDriftOnline on them (fusebox_driftpeers.peers, which needs
the pinned requirements.txt), and prints the same table with fusebox's rows
beside the peers' (fusebox_driftpeers.table). The stream reading and the
accounting (fusebox_driftpeers.streams, .accounting) need only the standard
library, so their tests run in the test command's Python part.
"""
