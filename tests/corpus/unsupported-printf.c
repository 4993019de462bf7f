// expect: 6:5 printf
// options: --size N=8
#include <stdio.h>
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    printf("%f\n", A[i]);
}
