#include <spdlog/spdlog.h>
int main(){ spdlog::info("hi"); return 0; }
