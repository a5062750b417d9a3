#include "programs/libbpf_log.hpp"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>

namespace xdpcap {

namespace {

std::string g_libbpf_log;

int collect_libbpf_log_line(enum libbpf_print_level level, const char* format, va_list args)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    char line[1024];
    const int n = std::vsnprintf(line, sizeof line, format, args);
    if (g_libbpf_log.size() < 64 * 1024)
        g_libbpf_log += line;
    return n;
}

} // namespace

void collect_libbpf_log()
{
    libbpf_set_print(collect_libbpf_log_line);
    g_libbpf_log.clear();
}

void clear_libbpf_log()
{
    g_libbpf_log.clear();
}

std::string last_libbpf_log_line()
{
    std::string log = g_libbpf_log;
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
        log.pop_back();
    const auto start = log.rfind('\n');
    return start == std::string::npos ? log : log.substr(start + 1);
}

} // namespace xdpcap
