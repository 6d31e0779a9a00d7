// tracedat_print.hpp — internal: compiling a print fmt (tracedat_print.cpp),
// for parse_event_format.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "timerlab/tracedat_format.hpp"

namespace timerlab {

// The compiled print fmt of `ev`, or null with `why` when it uses something
// the interpreter does not know (the caller then prints field=value).
std::shared_ptr<const PrintFormat> compile_print_format(std::string_view text, const EventFormat& ev,
                                                        std::uint32_t long_size, std::string& why);

// The fields each plugin prints, in the order render_plugin reads them.
std::vector<std::string_view> plugin_field_names(Plugin p);

}  // namespace timerlab
