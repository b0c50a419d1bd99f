"""Jobs built on the ``kafkalog`` data source: the scheduled load with checkpoints and rewinds
(``load`` for the command line, ``runner`` for one run, ``planner``, ``output``, ``report``,
``history``, ``progress``, ``consistency`` of the checkpoint with the output, ``repair``), and the
demo."""
