// The keel C++ API in one include.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/device_memory.hpp>  // the deprecated alias of MemoryPool
#include <keel/diagnose.hpp>
#include <keel/event.hpp>
#include <keel/fence.hpp>
#include <keel/format.hpp>
#include <keel/host_copy.hpp>
#include <keel/host_func.hpp>
#include <keel/kernel.hpp>
#include <keel/memory_config.hpp>
#include <keel/memory_pool.hpp>
#include <keel/memory_stats.hpp>
#include <keel/pinned_buffer.hpp>
#include <keel/raw_buffer.hpp>
#include <keel/result.hpp>
#include <keel/runtime.hpp>
#include <keel/stream.hpp>
#include <keel/trace.hpp>
