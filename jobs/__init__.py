"""Scheduled loads and offset-rewind reruns built on the ``kafkalog`` data source (to come), and the demo."""
