// Private to the library and its tests: how many worker threads the writers' CRC job queues get
// (crc_worker.h), so that tests can check that an archive comes out the same with the worker
// and without it (as when no thread can be started). Not installed; nothing in the library sets
// it.
#ifndef ONNXZIP_SRC_CRC_WORKER_TESTING_H_
#define ONNXZIP_SRC_CRC_WORKER_TESTING_H_

#include <cstddef>

namespace onnxzip::detail {

// 0: every CRC job runs on the writer's thread; 1 (the default): one worker thread.
void set_crc_job_threads(std::size_t threads);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CRC_WORKER_TESTING_H_
