"""The wheel carries libbatchfit.so.0 (native code the package loads through ctypes): it is
tagged for this platform, not py3-none-any, which pip would install on any machine where the
import then fails. No Python ABI is named: ctypes needs none."""
from setuptools import setup

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools 70.1 and later
except ImportError:
    from wheel.bdist_wheel import bdist_wheel


class PlatformWheel(bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple:
        return ("py3", "none", super().get_tag()[2])


setup(cmdclass={"bdist_wheel": PlatformWheel})
