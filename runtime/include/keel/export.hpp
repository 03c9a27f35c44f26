// KEEL_API marks what libkeel_runtime.so exports: the library is built with
// hidden visibility, so everything else (its internals, and the spdlog, fmt
// and Boost code it uses) stays inside it.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define KEEL_API __attribute__((visibility("default")))
// A private helper of a KEEL_API class that stays inside the library.
#define KEEL_LOCAL __attribute__((visibility("hidden")))
#else
#define KEEL_API
#define KEEL_LOCAL
#endif
