/* The one walker of v2 batches in C, included by every extension that reads them
 * (broker.records._recordwalk and spark_kafka_source._fastdecode); broker/records/record_walk.py
 * (records) and batch.py (the header) are its pure-Python twin, and the tests check they agree.
 *
 * rw_read_batch_header decodes a batch's fixed header and names its attribute bits.
 *
 * A record is `length, attributes, timestampDelta, offsetDelta, key, value, headers` with every
 * integer a zig-zag varint. The walker accepts what the Python twin accepts:
 *   - varints of at most 10 bytes, decoded to their exact (up to 70-bit) value;
 *   - a negative key, value or header-value length means null; a negative header-key length or
 *     header count is an error;
 *   - every field lies inside its record, every record inside the section, and a record's fields
 *     end exactly where its length says.
 * rw_next_record reads one record and says which field is at fault (rw_fault), and rw_reason says
 * it in words, the same words as the twin's. The batch attribute bits are named here once
 * (RW_BATCH_*).
 */
#ifndef BROKER_RECORDS_RECORDWALK_H
#define BROKER_RECORDS_RECORDWALK_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__SIZEOF_INT128__)
#error "the record walker needs a compiler with 128-bit integers (GCC or Clang on a 64-bit target)"
#endif

__extension__ typedef __int128 rw_i128;
__extension__ typedef unsigned __int128 rw_u128;

/* The bits of a batch's attributes (INT16 at byte 21 of its header). */
#define RW_BATCH_COMPRESSION_MASK 0x07
#define RW_BATCH_LOG_APPEND_TIME 0x08
#define RW_BATCH_TRANSACTIONAL 0x10
#define RW_BATCH_CONTROL 0x20
#define RW_BATCH_DELETE_HORIZON 0x40

#define RW_BATCH_HEADER_SIZE 61

/* The fixed header of a v2 batch, decoded, with its attribute bits named (the twin is
 * broker.records.batch.BatchHeader, whose properties name the same bits). */
typedef struct {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp, max_timestamp, producer_id;
    int16_t producer_epoch;
    int32_t base_sequence, records_count;
    int compression, log_append_time, is_transactional, is_control, has_delete_horizon;
} rw_batch_header;

/* The n-byte big-endian unsigned integer at p. */
static inline uint64_t
rw_big_endian(const uint8_t *p, int n)
{
    uint64_t value = 0;
    for (int i = 0; i < n; i++)
        value = value << 8 | p[i];
    return value;
}

/* Decode the header at p (size bytes there); -1 when fewer than RW_BATCH_HEADER_SIZE. The magic and
 * CRC are decoded, not checked. */
static inline int
rw_read_batch_header(const uint8_t *p, size_t size, rw_batch_header *h)
{
    if (size < RW_BATCH_HEADER_SIZE)
        return -1;
    h->base_offset = (int64_t)rw_big_endian(p, 8);
    h->batch_length = (int32_t)rw_big_endian(p + 8, 4);
    h->partition_leader_epoch = (int32_t)rw_big_endian(p + 12, 4);
    h->magic = (int8_t)p[16];
    h->crc = (uint32_t)rw_big_endian(p + 17, 4);
    h->attributes = (int16_t)rw_big_endian(p + 21, 2);
    h->last_offset_delta = (int32_t)rw_big_endian(p + 23, 4);
    h->base_timestamp = (int64_t)rw_big_endian(p + 27, 8);
    h->max_timestamp = (int64_t)rw_big_endian(p + 35, 8);
    h->producer_id = (int64_t)rw_big_endian(p + 43, 8);
    h->producer_epoch = (int16_t)rw_big_endian(p + 51, 2);
    h->base_sequence = (int32_t)rw_big_endian(p + 53, 4);
    h->records_count = (int32_t)rw_big_endian(p + 57, 4);
    h->compression = h->attributes & RW_BATCH_COMPRESSION_MASK;
    h->log_append_time = (h->attributes & RW_BATCH_LOG_APPEND_TIME) != 0;
    h->is_transactional = (h->attributes & RW_BATCH_TRANSACTIONAL) != 0;
    h->is_control = (h->attributes & RW_BATCH_CONTROL) != 0;
    h->has_delete_horizon = (h->attributes & RW_BATCH_DELETE_HORIZON) != 0;
    return 0;
}

#define RW_MAX_VARINT_BYTES 10

/* The zig-zag varint at p (at most 10 bytes, all before e), with its exact value; the position after
 * it, or NULL when it is truncated or longer than 10 bytes. */
static inline const uint8_t *
rw_read_varint(const uint8_t *p, const uint8_t *e, rw_i128 *out)
{
    if (p < e && !(*p & 0x80)) {
        uint8_t b = *p;
        *out = (rw_i128)((int64_t)(b >> 1) ^ -(int64_t)(b & 1));
        return p + 1;
    }
    rw_u128 raw = 0;
    for (int i = 0; i < RW_MAX_VARINT_BYTES && p + i < e; i++) {
        raw |= (rw_u128)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) {
            rw_u128 magnitude = raw >> 1;
            *out = (raw & 1) ? -(rw_i128)magnitude - 1 : (rw_i128)magnitude;
            return p + i + 1;
        }
    }
    return NULL;
}

/* A length or count: values beyond int64 saturate (only their sign and "too big" matter). */
static inline const uint8_t *
rw_read_length(const uint8_t *p, const uint8_t *e, int64_t *out)
{
    rw_i128 value;
    p = rw_read_varint(p, e, &value);
    if (p)
        *out = value > INT64_MAX ? INT64_MAX : value < INT64_MIN ? INT64_MIN : (int64_t)value;
    return p;
}

/* One record as it lies in its section. A null key or value has length -1. */
typedef struct {
    const uint8_t *start;   /* its length varint */
    const uint8_t *end;     /* one past its last byte */
    uint8_t attributes;
    rw_i128 timestamp_delta, offset_delta;
    const uint8_t *key, *value;
    int64_t key_length, value_length;
    const uint8_t *headers; /* the first header (after the count) */
    int64_t header_count;
} rw_record;

typedef enum {
    RW_OK = 0,
    RW_LENGTH_CUT,           /* the length varint is truncated or over-long */
    RW_LENGTH_OVERRUN,       /* negative, or past the end of the section */
    RW_EMPTY,                /* length 0: not even the attributes byte */
    RW_TIMESTAMP_DELTA_CUT,
    RW_OFFSET_DELTA_CUT,
    RW_KEY_LENGTH_CUT,
    RW_KEY_OVERRUN,
    RW_VALUE_LENGTH_CUT,
    RW_VALUE_OVERRUN,
    RW_HEADER_COUNT_CUT,
    RW_HEADER_COUNT_NEGATIVE,
    RW_HEADER_KEY_LENGTH_CUT,
    RW_HEADER_KEY_NULL,
    RW_HEADER_KEY_OVERRUN,
    RW_HEADER_VALUE_LENGTH_CUT,
    RW_HEADER_VALUE_OVERRUN,
    RW_FIELDS_SHORT,         /* the fields end before the record's length says */
} rw_fault;

/* Skip a header's key or value (a null value has a negative length). */
static inline rw_fault
rw_skip_header_field(const uint8_t **cursor, const uint8_t *re, int is_key)
{
    int64_t length;
    const uint8_t *p = rw_read_length(*cursor, re, &length);
    if (!p)
        return is_key ? RW_HEADER_KEY_LENGTH_CUT : RW_HEADER_VALUE_LENGTH_CUT;
    if (length < 0) {
        if (is_key)
            return RW_HEADER_KEY_NULL;
    } else {
        if (length > re - p)
            return is_key ? RW_HEADER_KEY_OVERRUN : RW_HEADER_VALUE_OVERRUN;
        p += length;
    }
    *cursor = p;
    return RW_OK;
}

/* Read the record at *cursor (sections end at e) into *r and move *cursor past it. On a fault,
 * *cursor stays and *r holds the fields read before it. */
static inline rw_fault
rw_next_record(const uint8_t **cursor, const uint8_t *e, rw_record *r)
{
    const uint8_t *p = *cursor;
    int64_t length;
    r->start = p;
    if (!(p = rw_read_length(p, e, &length)))
        return RW_LENGTH_CUT;
    if (length < 0 || length > e - p)
        return RW_LENGTH_OVERRUN;
    const uint8_t *re = p + length;
    r->end = re;
    if (p >= re)
        return RW_EMPTY;
    r->attributes = *p++;
    if (!(p = rw_read_varint(p, re, &r->timestamp_delta)))
        return RW_TIMESTAMP_DELTA_CUT;
    if (!(p = rw_read_varint(p, re, &r->offset_delta)))
        return RW_OFFSET_DELTA_CUT;
    if (!(p = rw_read_length(p, re, &r->key_length)))
        return RW_KEY_LENGTH_CUT;
    r->key = p;
    if (r->key_length >= 0) {
        if (r->key_length > re - p)
            return RW_KEY_OVERRUN;
        p += r->key_length;
    } else {
        r->key_length = -1;
    }
    if (!(p = rw_read_length(p, re, &r->value_length)))
        return RW_VALUE_LENGTH_CUT;
    r->value = p;
    if (r->value_length >= 0) {
        if (r->value_length > re - p)
            return RW_VALUE_OVERRUN;
        p += r->value_length;
    } else {
        r->value_length = -1;
    }
    if (!(p = rw_read_length(p, re, &r->header_count)))
        return RW_HEADER_COUNT_CUT;
    if (r->header_count < 0)
        return RW_HEADER_COUNT_NEGATIVE;
    r->headers = p;
    for (int64_t h = 0; h < r->header_count; h++) {
        rw_fault fault;
        if ((fault = rw_skip_header_field(&p, re, 1)) || (fault = rw_skip_header_field(&p, re, 0)))
            return fault;
    }
    if (p != re)
        return RW_FIELDS_SHORT;
    *cursor = re;
    return RW_OK;
}

/* A fault in words (record_walk.py's reasons); the section's own faults follow. */
static inline const char *
rw_reason(rw_fault fault)
{
    switch (fault) {
    case RW_OK: return NULL;
    case RW_LENGTH_CUT: return "its length is cut short";
    case RW_LENGTH_OVERRUN: return "its length overruns its batch";
    case RW_EMPTY: return "it is empty";
    case RW_TIMESTAMP_DELTA_CUT: return "its timestamp delta runs past the record";
    case RW_OFFSET_DELTA_CUT: return "its offset delta runs past the record";
    case RW_KEY_LENGTH_CUT:
    case RW_KEY_OVERRUN: return "its key runs past the record";
    case RW_VALUE_LENGTH_CUT:
    case RW_VALUE_OVERRUN: return "its value runs past the record";
    case RW_HEADER_COUNT_CUT: return "its header count runs past the record";
    case RW_HEADER_COUNT_NEGATIVE: return "its header count is negative";
    case RW_HEADER_KEY_NULL: return "a header key is null";
    case RW_HEADER_KEY_LENGTH_CUT:
    case RW_HEADER_KEY_OVERRUN: return "a header key runs past the record";
    case RW_HEADER_VALUE_LENGTH_CUT:
    case RW_HEADER_VALUE_OVERRUN: return "a header value runs past the record";
    case RW_FIELDS_SHORT: return "its fields end before its length says";
    }
    return "it is invalid";
}

#define RW_COUNT_NEGATIVE "the record count is negative"
#define RW_LEFT_OVER "bytes are left over after the last record"

#endif
