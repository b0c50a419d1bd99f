"""What every layer of the broker, the client, the Spark source and the jobs share, standing below them
all: it imports nothing else of this project.

``settings``: the error naming a bad setting and the parsers of settings given as text; ``files``:
atomic file replacement; ``offsets``: the special timestamps of a ListOffsets request; ``java``:
the ``java`` a JVM process runs.
"""
