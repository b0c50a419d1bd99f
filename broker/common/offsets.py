"""The two special timestamps of a ListOffsets request (Kafka's ``ListOffsetsRequest``): not a time
but "the offset of the first record kept" and "the offset the next record will get"."""

EARLIEST = -2
LATEST = -1
