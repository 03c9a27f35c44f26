// The keel C++ API in one include.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/event.hpp>
#include <keel/host_func.hpp>
#include <keel/kernel.hpp>
#include <keel/memory/device_memory.hpp>
#include <keel/result.hpp>
#include <keel/runtime.hpp>
#include <keel/stream.hpp>
