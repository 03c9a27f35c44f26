/* keel.h compiled as C for data models other than the host's: its layout
 * checks (static assertions) must hold on ILP32 and LP64 alike. */
#include <keel/keel.h>

int keel_layout_check_translation_unit;
