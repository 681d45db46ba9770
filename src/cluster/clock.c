/* The wall clock the server stamps commands with (leader_time_ms) and fills
 * missing DataVersion timestamps from; the pure layers take time as an
 * argument instead. */
#include <time.h>

#include "cluster/cluster.h"

int64_t ns_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
