// expect: ok
// options: --size N=16
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    if (i >= 2)
      B[i] = A[i - 2];
}
