/* Valgrind writes into the mask given to rt_sigsuspend; a program passing a mask in read-only
   memory (a constant) then crashes valgrind itself. This shim hands the call a writable copy. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return real(&copy);
}
