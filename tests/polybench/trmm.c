/* trmm.c: PolyBench/C 4.2 linear-algebra/blas/trmm, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(M) && !defined(N)
# ifdef MINI_DATASET
#  define M 20
#  define N 30
# endif
# ifdef SMALL_DATASET
#  define M 60
#  define N 80
# endif
# ifdef MEDIUM_DATASET
#  define M 200
#  define N 240
# endif
#endif

#define _PB_M POLYBENCH_LOOP_BOUND(M,m)
#define _PB_N POLYBENCH_LOOP_BOUND(N,n)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_trmm(int m, int n,
                 DATA_TYPE alpha,
                 DATA_TYPE POLYBENCH_2D(A,M,M,m,m),
                 DATA_TYPE POLYBENCH_2D(B,M,N,m,n))
{
  int i, j, k;

//BLAS parameters
//SIDE   = 'L'
//UPLO   = 'L'
//TRANSA = 'T'
//DIAG   = 'U'
// => Form  B := alpha*A**T*B.
// A is MxM
// B is MxN
#pragma scop
  for (i = 0; i < _PB_M; i++)
     for (j = 0; j < _PB_N; j++) {
        for (k = i+1; k < _PB_M; k++)
           B[i][j] += A[k][i] * B[k][j];
        B[i][j] = alpha * B[i][j];
     }
#pragma endscop

}
