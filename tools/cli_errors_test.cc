#include "tools/cli_errors.h"

#include <gtest/gtest.h>

namespace torchscan::cli {
namespace {

TEST(OneLineCauseTest, FirstLineOfAnOrdinaryError) {
  EXPECT_EQ("PytorchStreamReader failed reading zip archive",
            OneLineCause("PytorchStreamReader failed reading zip archive\n"
                         "Exception raised from valid at caffe2/...\n"));
}

TEST(OneLineCauseTest, LastLineOfATorchScriptInterpreterError) {
  EXPECT_EQ(
      "RuntimeError: Expected 3D (unbatched) or 4D (batched) input to conv2d",
      OneLineCause("The following operation failed in the TorchScript "
                   "interpreter.\n"
                   "Traceback of TorchScript (most recent call last):\n"
                   "  File \"code/__torch__.py\", line 12, in forward\n"
                   "    _0 = torch.conv2d(x, w)\n"
                   "RuntimeError: Expected 3D (unbatched) or 4D (batched) "
                   "input to conv2d\n\n"));
}

TEST(OneLineCauseTest, BlankLinesAndIndentationAreSkipped) {
  EXPECT_EQ("the cause", OneLineCause("\n   \n  the cause  \nmore\n"));
}

TEST(OneLineCauseTest, ABlankMessageHasNoCause) {
  EXPECT_EQ("", OneLineCause(" \n\t\n"));
}

}  // namespace
}  // namespace torchscan::cli
