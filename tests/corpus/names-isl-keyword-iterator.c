// expect: 4:12 isl
// options: --size N=8
void f(int N, double A[N]) {
  for (int exists = 0; exists < N; exists++)
    A[exists] = 1.0;
}
