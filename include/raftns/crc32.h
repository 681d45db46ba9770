/* CRC-32 (zlib's, the one Java's java.util.zip.CRC32 computes), as RocketMQ
 * puts it in bodyCrc32. Pure. */
#ifndef RAFTNS_CRC32_H
#define RAFTNS_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t ns_crc32(const uint8_t *p, size_t n);

/* The same over zlib alone (what ns_crc32 is checked against). */
uint32_t ns_crc32_zlib(const uint8_t *p, size_t n);

#endif
