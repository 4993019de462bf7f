// expect: 6:11 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (i * j < N)
        B[i] = A[j];
}
