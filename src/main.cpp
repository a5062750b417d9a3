#include <cstdio>
#include <exception>
#include <variant>

#include "app/app.hpp"
#include "cli/cli.hpp"
#include "base/error.hpp"
#include "app/extcap.hpp"
#include "host/interfaces.hpp"

int main(int argc, char** argv)
{
    xdpcap::reserve_standard_streams();
    xdpcap::ignore_signals_that_are_write_errors();
    try {
        if (xdpcap::extcap::is_extcap_call(argc, argv))
            return xdpcap::extcap::run(argc, argv);
        const auto outcome = xdpcap::parse_cli(argc, argv);
        if (const auto* text = std::get_if<xdpcap::ShowText>(&outcome)) {
            std::fputs(text->text.c_str(), stdout);
            return xdpcap::kExitOk;
        }
        return xdpcap::run_capture(std::get<xdpcap::Config>(outcome));
    } catch (const xdpcap::Error& e) {
        std::fprintf(stderr, "xdpcap: %s\n", e.what());
        return e.exit_status();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "xdpcap: %s\n", e.what());
        return xdpcap::kExitRuntime;
    }
}
