/* cli_driver.c — driver/main.c with its main renamed texc_main, for the
 * command-line fuzz target (fuzz_cli.c). */
int texc_main(int argc, char **argv);
#define main texc_main
#include "driver/main.c"
